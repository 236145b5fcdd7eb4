#include "CSQLiteTuning.h"
#include <sqlite3.h>

int jobq_sqlite_tune_process(void) {
    int result = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    if (result != SQLITE_OK) return result;
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}
