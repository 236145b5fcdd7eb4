#ifndef CSQLITETUNING_H
#define CSQLITETUNING_H

/// Turns off SQLite's memory statistics (SQLITE_CONFIG_MEMSTATUS), which put a process-wide
/// mutex around every allocation SQLite makes. Must run before SQLite is first used in the
/// process; afterwards it changes nothing. Returns SQLite's result code (0 when applied).
///
/// A C function because sqlite3_config() is variadic, which Swift cannot call.
int jobq_sqlite_disable_memory_statistics(void);

#endif
