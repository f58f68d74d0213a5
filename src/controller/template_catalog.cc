#include "controller/template_catalog.h"

#include <fmt/format.h>

#include "controller/internal.h"

namespace gpurent::controller {

using detail::forbidden;
using model::Principal;

TemplateCatalog::TemplateCatalog(ChangeSet& changes) : changes_(changes) {
  for (auto& t : model::builtin_templates()) templates_.emplace(t.name, std::move(t));
}

void TemplateCatalog::restore(std::vector<model::Template> stored) {
  for (auto& t : stored) templates_.emplace(t.name, std::move(t));
}

std::vector<const model::Template*> TemplateCatalog::all() const {
  std::vector<const model::Template*> out;
  out.reserve(templates_.size());
  for (const auto& [name, t] : templates_) out.push_back(&t);
  return out;
}

Result<const model::Template*> TemplateCatalog::find(std::string_view name) const {
  const auto it = templates_.find(name);
  if (it == templates_.end()) return fail(Error::not_found("template", name));
  return &it->second;
}

Result<model::Template> TemplateCatalog::put(const Principal& caller, model::Template t) {
  if (!caller.is_operator()) return fail(forbidden("change templates"));
  t.builtin = false;
  GPURENT_CHECK(model::validate_template(t));
  const auto existing = templates_.find(t.name);
  if (existing != templates_.end() && existing->second.builtin) {
    return fail(Error::conflict(
        "builtin_template",
        fmt::format("'{}' is built in and cannot be changed; save yours under another name",
                    t.name)));
  }
  if (existing == templates_.end() && templates_.size() >= model::kMaxTemplates) {
    return fail(Error::conflict("too_many_templates",
                                fmt::format("the catalog holds at most {} templates; delete one "
                                            "first",
                                            model::kMaxTemplates)));
  }
  changes_.template_changes.push_back({t.name, t});
  templates_.insert_or_assign(t.name, t);
  return t;
}

Status TemplateCatalog::remove(const Principal& caller, std::string_view name) {
  if (!caller.is_operator()) return fail(forbidden("change templates"));
  const auto it = templates_.find(name);
  if (it == templates_.end()) return fail(Error::not_found("template", name));
  if (it->second.builtin) {
    return fail(Error::conflict("builtin_template",
                                fmt::format("'{}' is built in and cannot be deleted", name)));
  }
  // Work made from it keeps its copy of what the template said (model/template.h).
  changes_.template_changes.push_back({it->first, std::nullopt});
  templates_.erase(it);
  return {};
}

}  // namespace gpurent::controller
