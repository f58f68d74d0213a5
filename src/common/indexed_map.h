// A std::map keyed by string, with a hashed index beside it: walks keep the map's key order (id
// listings, and the passes whose output must not depend on a hash function), and a lookup by key
// costs one hash probe instead of one tree level per comparison. With values the size of an
// instance or a node (kilobytes each), every level of the tree is a cache miss: among 10,000
// instances a lookup took about 2 µs (bench/RESULTS.md, "Lookups by id").
//
// Elements are never erased: the controller keeps every instance, node and job it has known
// (ended ones are kept for billing and history), which is what keeps the index's iterators valid.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/string_hash.h"

namespace gpurent {

template <class Value>
class IndexedMap {
  using Map = std::map<std::string, Value, std::less<>>;

 public:
  using iterator = typename Map::iterator;
  using const_iterator = typename Map::const_iterator;

  IndexedMap() = default;
  IndexedMap(const IndexedMap& other) : map_(other.map_) { reindex(); }
  IndexedMap& operator=(const IndexedMap& other) {
    if (this != &other) {
      map_ = other.map_;
      reindex();
    }
    return *this;
  }
  // A moved std::map keeps its nodes, so the index's iterators stay valid.
  IndexedMap(IndexedMap&&) noexcept = default;
  IndexedMap& operator=(IndexedMap&&) noexcept = default;

  // As std::map::try_emplace: an existing key keeps its value.
  template <class... Args>
  std::pair<iterator, bool> emplace(std::string key, Args&&... args) {
    auto placed = map_.try_emplace(std::move(key), std::forward<Args>(args)...);
    if (placed.second) index_.emplace(std::string_view(placed.first->first), placed.first);
    return placed;
  }

  iterator find(std::string_view key) {
    const auto it = index_.find(key);
    return it == index_.end() ? map_.end() : it->second;
  }
  const_iterator find(std::string_view key) const {
    const auto it = index_.find(key);
    return it == index_.end() ? map_.cend() : const_iterator(it->second);
  }
  bool contains(std::string_view key) const { return index_.contains(key); }

  // Throws std::out_of_range for an unknown key, as std::map::at: callers use it where the key
  // must exist.
  Value& at(std::string_view key) { return const_cast<Value&>(std::as_const(*this).at(key)); }
  const Value& at(std::string_view key) const {
    const auto it = index_.find(key);
    if (it == index_.end()) throw std::out_of_range("IndexedMap::at: no such key");
    return it->second->second;
  }

  // In key order.
  iterator begin() { return map_.begin(); }
  iterator end() { return map_.end(); }
  const_iterator begin() const { return map_.begin(); }
  const_iterator end() const { return map_.end(); }
  iterator upper_bound(std::string_view key) { return map_.upper_bound(key); }
  const_iterator upper_bound(std::string_view key) const { return map_.upper_bound(key); }
  size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }

 private:
  void reindex() {
    index_.clear();
    index_.reserve(map_.size());
    for (auto it = map_.begin(); it != map_.end(); ++it)
      index_.emplace(std::string_view(it->first), it);
  }

  Map map_;
  std::unordered_map<std::string_view, iterator, StringHash, std::equal_to<>> index_;
};

}  // namespace gpurent
