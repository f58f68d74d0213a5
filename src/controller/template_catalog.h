// The template catalog (model/template.h): the built-in templates and the operators' own, by
// name. Everyone may read it; operators add, replace and delete their own (the built-in ones are
// fixed). Changes go into the pending ChangeSet.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "controller/change_set.h"
#include "model/template.h"
#include "model/tenant.h"

namespace gpurent::controller {

class TemplateCatalog {
 public:
  // Starts with the built-in templates.
  explicit TemplateCatalog(ChangeSet& changes);

  // Adds the operators' stored templates; one stored under a built-in's name (saved before a
  // release added that built-in) gives way.
  void restore(std::vector<model::Template> stored);
  std::vector<const model::Template*> all() const;
  Result<const model::Template*> find(std::string_view name) const;
  // Operators add or replace their own templates (validated; kConflict "builtin_template" for a
  // built-in name; at most model::kMaxTemplates).
  Result<model::Template> put(const model::Principal& caller, model::Template t);
  Status remove(const model::Principal& caller, std::string_view name);

 private:
  ChangeSet& changes_;
  std::map<std::string, model::Template, std::less<>> templates_;  // by name
};

}  // namespace gpurent::controller
