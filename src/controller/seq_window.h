// The most recent records of an append-only log whose seq is dense (each record's is the
// previous one's plus one, from 1): the event log and the audit log keep their newest
// `capacity` records in one, and list them from a cursor.
//
// Invariant: seq is dense within the window and as restored, so the first record after a
// cursor is found by arithmetic, not by a scan.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <deque>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpurent::controller {

template <class Record>  // with an int64_t `seq`
class SeqWindow {
 public:
  explicit SeqWindow(size_t capacity) : capacity_(capacity) {}

  // Rebuilds the window from stored records, oldest first; kInternal naming `log` on a gap.
  Status restore(std::vector<Record> records, std::string_view log) {
    for (auto& record : records) {
      if (record.seq != last_seq_ + 1 && !records_.empty()) {
        return fail(Error::internal(fmt::format("{} has a gap before seq {}", log, record.seq)));
      }
      last_seq_ = record.seq;
      push(std::move(record));
    }
    return {};
  }

  // Gives the record the next seq and keeps it; returns it as kept.
  const Record& append(Record record) {
    record.seq = ++last_seq_;
    push(std::move(record));
    return records_.back();
  }

  // The records after seq `after` (oldest first) that `keep` accepts, at most `limit`.
  template <class Keep>
  std::vector<const Record*> list(int64_t after, size_t limit, const Keep& keep) const {
    std::vector<const Record*> out;
    size_t first = 0;
    if (!records_.empty() && after >= records_.front().seq) {
      first = static_cast<size_t>(after - records_.front().seq + 1);
    }
    for (size_t i = first; i < records_.size() && out.size() < limit; ++i) {
      if (keep(records_[i])) out.push_back(&records_[i]);
    }
    return out;
  }

 private:
  void push(Record record) {
    records_.push_back(std::move(record));
    if (records_.size() > capacity_) records_.pop_front();
  }

  size_t capacity_;
  std::deque<Record> records_;  // the most recent, in seq order
  int64_t last_seq_ = 0;
};

}  // namespace gpurent::controller
