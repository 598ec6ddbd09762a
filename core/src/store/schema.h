#pragma once
// The schema as a list of migrations: migration i turns version i into version i + 1. A new
// database runs them all, so a fresh file and a migrated one have the same schema by construction.
#include "store/sqlite_db.h"

namespace tandem::store {

// Brings the database (inside the caller's transaction) from `from_version` to kSchemaVersion.
void migrate(sql::Db& db, int from_version);

}  // namespace tandem::store
