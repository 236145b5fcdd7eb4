// C, because glibc declares pipe2 and prctl only with _GNU_SOURCE, which Swift's Glibc module
// does not define.
#define _GNU_SOURCE
#include "CProcessControl.h"
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

int jobq_pipe_cloexec(int ends[2]) {
#ifdef __linux__
    return pipe2(ends, O_CLOEXEC);
#else
    if (pipe(ends) != 0) return -1;
    fcntl(ends[0], F_SETFD, FD_CLOEXEC);
    fcntl(ends[1], F_SETFD, FD_CLOEXEC);
    return 0;
#endif
}

int jobq_become_child_subreaper(void) {
#ifdef __linux__
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#else
    return 0;
#endif
}

int jobq_spawn_close_from(void *actions, int lowest) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return posix_spawn_file_actions_addclosefrom_np((posix_spawn_file_actions_t *)actions, lowest);
#else
    (void)actions;
    (void)lowest;
    return ENOSYS;
#endif
}

extern char **environ;

int jobq_scrub_environment_value(const char *name) {
    size_t length = strlen(name);
    int scrubbed = 0;
    for (char **entry = environ; entry && *entry; entry++) {
        if (strncmp(*entry, name, length) == 0 && (*entry)[length] == '=') {
            char *value = *entry + length + 1;
            memset(value, 0, strlen(value));
            scrubbed++;
        }
    }
    return scrubbed;
}
