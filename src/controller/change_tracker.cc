#include "controller/change_tracker.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <tuple>

#include "common/assert.h"
#include "model/codec.h"

namespace gpurent::controller {
namespace {

// Which objects of type T a take has met already, among the listings it was built over.
// Distinct objects of one type never overlap, so they lie at least sizeof(T) apart and
// (address - lowest) / sizeof(T) gives each a bit of its own over the listings' address range.
// A batch's objects lie close together (the billing tick's 100,000 usage records make a few KB of
// bits), so the marks stay in cache, where a hash table of pointers is probed at random, a cache
// miss per object. Objects spread wider than a word of bits per listing are hashed instead.
template <class T>
class Sightings {
 public:
  Sightings(std::initializer_list<std::span<T* const>> listings) {
    size_t count = 0;
    uintptr_t highest = 0;
    for (const auto listing : listings) {
      for (T* object : listing) {
        lowest_ = std::min(lowest_, address(object));
        highest = std::max(highest, address(object));
      }
      count += listing.size();
    }
    if (count == 0) return;
    const size_t words = (highest - lowest_) / sizeof(T) / 64 + 1;
    if (words <= count) {
      bits_.assign(words, 0);
    } else {
      hashed_.reserve(count);
    }
  }

  // True the first time it is asked about `object` (one of the listings').
  bool first(const T* object) {
    if (bits_.empty()) return hashed_.insert(object).second;
    const uintptr_t slot = (address(object) - lowest_) / sizeof(T);
    GPURENT_ASSERT(slot / 64 < bits_.size(), "an object outside the listings");
    uint64_t& word = bits_[slot / 64];
    const uint64_t bit = uint64_t{1} << (slot % 64);
    if ((word & bit) != 0) return false;
    word |= bit;
    return true;
  }

 private:
  static uintptr_t address(const T* object) { return reinterpret_cast<uintptr_t>(object); }

  uintptr_t lowest_ = UINTPTR_MAX;
  std::vector<uint64_t> bits_;  // empty: hashed_
  std::unordered_set<const T*> hashed_;
};

// Keeps the first listing of each object, in order.
template <class T>
void keep_first_listings(std::vector<T*>& listing) {
  Sightings<T> seen({listing});
  std::erase_if(listing, [&](const T* object) { return !seen.first(object); });
}

ObjectRow row_of(const model::Instance& instance) {
  return {instance.id, instance.tenant_id, model::instance_row_json(instance)};
}

}  // namespace

void ChangeTracker::touch(model::Instance& instance) {
  note_change(instance);
  list(touched_instances_, instance);
}

void ChangeTracker::note_change(model::Instance& instance) {
  ++instance.revision;
  list(changed_instances_, instance);
}

void ChangeTracker::touch_node(model::Node& node, bool desired_set_changed) {
  if (desired_set_changed) {
    ++node.generation;
    pending_.woken_nodes.insert(node.id);
    if (node.generation - stored_generations_[&node] < kGenerationsBetweenNodeWrites) return;
  }
  list(touched_nodes_, node);
}

void ChangeTracker::touch_usage(const model::UsageRecord& usage) { list(touched_usage_, usage); }

void ChangeTracker::touch_metering(const model::UsageRecord& usage) { list(metered_usage_, usage); }

void ChangeTracker::expect_metering(size_t records) {
  metered_usage_.reserve(metered_usage_.size() + records);
}

void ChangeTracker::touch_job(model::Job& job) {
  ++job.revision;
  list(touched_jobs_, job);
}

void ChangeTracker::touch_task(model::Job& job, int index) {
  if (!streamed_tasks_.empty()) streamed_tasks_.erase(&job.tasks.at(static_cast<size_t>(index)));
  if (!touched_tasks_.empty() && touched_tasks_.back().job == &job &&
      touched_tasks_.back().index == index) {
    return;
  }
  touched_tasks_.push_back({&job, index});
}

void ChangeTracker::touch_volume(const model::Volume& volume) { list(touched_volumes_, volume); }

void ChangeTracker::stream_placed_rows(std::function<void(ChangeSet)> sink, size_t every) {
  row_sink_ = std::move(sink);
  rows_per_piece_ = every;
  placed_unstreamed_.clear();
}

void ChangeTracker::placed(const model::Instance& instance, const model::Job* job) {
  if (row_sink_) placed_unstreamed_.push_back({&instance, job});
}

void ChangeTracker::stream_placed_rows_if_due() {
  if (!row_sink_ || placed_unstreamed_.size() < rows_per_piece_) return;
  ChangeSet piece;
  piece.instance_rows.reserve(placed_unstreamed_.size());
  for (const auto& [instance, job] : placed_unstreamed_) {
    auto [streamed, fresh] = streamed_revisions_.try_emplace(instance, instance->revision);
    if (!fresh && streamed->second == instance->revision) continue;  // placed twice in one piece
    streamed->second = instance->revision;
    piece.instance_rows.push_back(row_of(*instance));
    if (job == nullptr || instance->job_rank != 0) continue;
    // A job member's task changed with its placement (its attempts): its row goes along.
    const model::JobTask& task = job->tasks.at(static_cast<size_t>(instance->job_task));
    if (!streamed_tasks_.insert(&task).second) continue;  // a gang's task goes with its rank 0
    piece.job_tasks.push_back({job->id, task});
  }
  placed_unstreamed_.clear();
  row_sink_(std::move(piece));
}

ChangeSet ChangeTracker::take_changes_for_store() {
  keep_first_listings(touched_instances_);
  pending_.instance_rows.reserve(pending_.instance_rows.size() + touched_instances_.size());
  for (const model::Instance* instance : touched_instances_) {
    const auto streamed = streamed_revisions_.find(instance);
    if (streamed != streamed_revisions_.end() && streamed->second == instance->revision) {
      continue;  // handed over as it is
    }
    pending_.instance_rows.push_back(row_of(*instance));
  }
  touched_instances_.clear();
  return take_changes();
}

ChangeSet ChangeTracker::take_changes() {
  // Each listed object is copied here once, at its latest state, however often it changed: that
  // state is all the store needs, and the batch so costs one copy per object it changed (an
  // array's members and their nodes change several times each in one command).
  keep_first_listings(touched_instances_);
  pending_.instances.reserve(pending_.instances.size() + touched_instances_.size());
  for (const model::Instance* instance : touched_instances_)
    pending_.instances.push_back(*instance);
  keep_first_listings(changed_instances_);
  pending_.changed_instances.reserve(pending_.changed_instances.size() + changed_instances_.size());
  for (const model::Instance* instance : changed_instances_) {
    pending_.changed_instances.push_back(instance->id);
  }

  keep_first_listings(touched_nodes_);
  for (const model::Node* node : touched_nodes_) {
    pending_.nodes.push_back(*node);
    stored_generations_[node] = node->generation;
  }

  // Whole records first: a packed one is positioned after them, and a record listed whole is
  // left out of the packed ones.
  Sightings<const model::UsageRecord> seen({touched_usage_, metered_usage_});
  for (const model::UsageRecord* usage : touched_usage_) {
    if (seen.first(usage)) pending_.usage.push_back(*usage);
  }
  pending_.metered_usage.reserve(pending_.metered_usage.size() + metered_usage_.size());
  for (const model::UsageRecord* usage : metered_usage_) {
    if (seen.first(usage)) pending_.add_metered_usage(*usage);
  }

  keep_first_listings(touched_volumes_);
  for (const model::Volume* volume : touched_volumes_) pending_.volumes.push_back(*volume);

  // A job's row holds its own fields; its tasks are rows of their own, and only the touched ones
  // are written (a job's task list is as long as its array). Both in id order.
  std::sort(touched_tasks_.begin(), touched_tasks_.end(), [](TaskRef a, TaskRef b) {
    if (a.job == b.job) return a.index < b.index;
    return a.job->id < b.job->id;
  });
  const auto same_task = [](TaskRef a, TaskRef b) { return a.job == b.job && a.index == b.index; };
  touched_tasks_.erase(std::unique(touched_tasks_.begin(), touched_tasks_.end(), same_task),
                       touched_tasks_.end());
  for (const auto [job, index] : touched_tasks_) {
    const model::JobTask& task = job->tasks.at(static_cast<size_t>(index));
    if (streamed_tasks_.contains(&task)) continue;  // handed over as it is
    pending_.job_tasks.push_back({job->id, task});
  }
  std::sort(touched_jobs_.begin(), touched_jobs_.end(),
            [](const model::Job* a, const model::Job* b) { return a->id < b->id; });
  touched_jobs_.erase(std::unique(touched_jobs_.begin(), touched_jobs_.end()), touched_jobs_.end());
  for (model::Job* job : touched_jobs_) {
    auto tasks = std::move(job->tasks);  // the copy goes without them; then they are put back
    job->tasks.clear();
    pending_.jobs.push_back(*job);
    job->tasks = std::move(tasks);
  }

  touched_instances_.clear();
  changed_instances_.clear();
  touched_nodes_.clear();
  touched_usage_.clear();
  metered_usage_.clear();
  touched_volumes_.clear();
  touched_tasks_.clear();
  touched_jobs_.clear();
  placed_unstreamed_.clear();
  streamed_revisions_.clear();
  streamed_tasks_.clear();
  return std::exchange(pending_, ChangeSet{});
}

}  // namespace gpurent::controller
