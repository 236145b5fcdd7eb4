#ifndef CSQLITETUNING_H
#define CSQLITETUNING_H

/// Sets SQLite's process-wide configuration for jobq's workload (see
/// `JobQueue.tuneSQLiteBeforeFirstUse()`): memory statistics off (SQLITE_CONFIG_MEMSTATUS, a
/// process-wide mutex around every allocation SQLite makes), and no bulk page-cache allocation
/// per cache (SQLITE_CONFIG_PAGECACHE with no lines: every temporary table of a statement has a
/// cache of its own, and each one's 20-page bulk was allocated and written whole, fresh memory
/// from the OS each time). Works only before SQLite is first used in the process; afterwards it
/// changes nothing. Returns SQLite's result code (0 when applied).
///
/// A C function because sqlite3_config() is variadic, which Swift cannot call.
int jobq_sqlite_tune_process(void);

#endif
