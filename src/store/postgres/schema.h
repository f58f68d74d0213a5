// The PostgreSQL store's schema and its migrations, and the leader lease that fences writers.
//
// Migrations: each entry of the list moves the schema from version i to i + 1 (never edit a
// released entry: append). They run at open under a transaction-scoped advisory lock, so that
// servers starting together against one database migrate it once.
//
// The lease (one row of leader_lease): epoch, holder, the holder's API URL, the server process of
// the holder's lease connection (backend_pid) and expires_at, all in the database's clock. A
// server becomes leader by taking the row when it is free, expired, or its holder's connection is
// gone (a killed leader's connection ends at once; a paused one's stays, and its lease expires),
// which increments the epoch. Every commit of a leader ends with gpurent_fence(its epoch), which
// locks the row (FOR SHARE) until the commit ends and raises SQLSTATE GR001 when the epoch is no
// longer the row's: a deposed leader's writes are refused by the database itself, and a takeover
// (an UPDATE of the row) waits for any commit that passed the fence to end first.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "store/postgres/connection.h"

namespace gpurent::store::pg {

// The SQLSTATE of a commit refused by the fence.
inline constexpr std::string_view kFencedSqlState = "GR001";

Status migrate(Connection& connection);
// Prepares "fence" ($1: the epoch) on `connection`.
Status prepare_fence(Connection& connection);

}  // namespace gpurent::store::pg
