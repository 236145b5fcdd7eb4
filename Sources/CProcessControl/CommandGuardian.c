// A worker's guardian: a small process forked from the worker that outlives it by a moment, to
// end the commands the worker was running when it died, however it died (SIGKILL, the OOM
// killer, a second SIGINT's _exit). It learns of each command over a socket whose only other
// end the worker holds; the kernel closes that end when the worker dies, and the guardian then
// kills what it was told about. It reads nothing it was not told: it never looks for other
// workers' processes, nor acts on a mark it did not receive from its own worker.
//
// The child of a multi-threaded process may only make async-signal-safe calls: this file uses
// system calls and fixed buffers only (no malloc, no stdio).
#define _GNU_SOURCE
#include "CProcessControl.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

struct guardian_message {
    int32_t kind;
    int32_t group;
    char mark[JOBQ_GUARDIAN_MARK_MAX];
};

// The commands being watched: far more than a worker runs at once (one per running shell job).
#define GUARDIAN_CAPACITY 4096

struct watched {
    int used;
    pid_t group;
    char mark[JOBQ_GUARDIAN_MARK_MAX];
};

static struct watched watched[GUARDIAN_CAPACITY];

static void remember(const struct guardian_message *message) {
    int free_slot = -1;
    for (int i = 0; i < GUARDIAN_CAPACITY; i++) {
        if (watched[i].used && strncmp(watched[i].mark, message->mark, JOBQ_GUARDIAN_MARK_MAX) == 0) {
            if (message->kind == JOBQ_GUARDIAN_FORGET) {
                watched[i].used = 0;
            } else if (message->group > 0) {
                watched[i].group = message->group;
            }
            return;
        }
        if (!watched[i].used && free_slot < 0) free_slot = i;
    }
    if (message->kind == JOBQ_GUARDIAN_FORGET || free_slot < 0) return;
    watched[free_slot].used = 1;
    watched[free_slot].group = message->group > 0 ? message->group : 0;
    memcpy(watched[free_slot].mark, message->mark, JOBQ_GUARDIAN_MARK_MAX);
    watched[free_slot].mark[JOBQ_GUARDIAN_MARK_MAX - 1] = 0;
}

#ifdef __linux__
// /proc/PID/environ of one process, at most this much of it.
static char environment[1 << 20];

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

// "PID/leaf" into `path` (which holds 64 bytes).
static void proc_path(char *path, const char *pid, const char *leaf) {
    size_t at = 0;
    for (const char *c = pid; *c && at < 40; c++) path[at++] = *c;
    path[at++] = '/';
    for (const char *c = leaf; *c && at < 62; c++) path[at++] = *c;
    path[at] = 0;
}

// Whether the NUL-separated entries of `length` bytes hold one of the watched marks exactly.
static int carries_watched_mark(size_t length) {
    size_t start = 0;
    while (start < length) {
        size_t end = start;
        while (end < length && environment[end] != 0) end++;
        size_t size = end - start;
        for (int i = 0; i < GUARDIAN_CAPACITY; i++) {
            if (!watched[i].used) continue;
            size_t mark_size = strnlen(watched[i].mark, JOBQ_GUARDIAN_MARK_MAX);
            if (mark_size == size && memcmp(environment + start, watched[i].mark, size) == 0) return 1;
        }
        start = end + 1;
    }
    return 0;
}

// Kills (SIGKILL) every live process that carries a watched mark and provably belongs here:
// this user's (the owner of its /proc entry, as a process of another user is never ours), in
// this PID namespace (a pid read across namespaces names another process). Returns how many.
static int kill_marked(void) {
    int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc < 0) return 0;
    char own_namespace[128] = {0};
    ssize_t own_length = readlink("/proc/self/ns/pid", own_namespace, sizeof own_namespace - 1);
    uid_t user = geteuid();
    pid_t self = getpid();
    int killed = 0;
    char entries[16384];
    for (;;) {
        long count = syscall(SYS_getdents64, proc, entries, sizeof entries);
        if (count <= 0) break;
        for (long at = 0; at < count;) {
            struct linux_dirent64 *entry = (struct linux_dirent64 *)(entries + at);
            at += entry->d_reclen;
            const char *name = entry->d_name;
            if (name[0] < '0' || name[0] > '9') continue;
            pid_t pid = 0;
            int digits = 1;
            for (const char *c = name; *c; c++) {
                if (*c < '0' || *c > '9') { digits = 0; break; }
                pid = pid * 10 + (*c - '0');
            }
            if (!digits || pid == self) continue;
            struct stat owner;
            if (fstatat(proc, name, &owner, 0) != 0 || owner.st_uid != user) continue;
            char path[64];
            if (own_length > 0) {
                char namespace[128] = {0};
                proc_path(path, name, "ns/pid");
                ssize_t length = readlinkat(proc, path, namespace, sizeof namespace - 1);
                if (length != own_length || memcmp(namespace, own_namespace, (size_t)length) != 0) continue;
            }
            proc_path(path, name, "environ");
            int file = openat(proc, path, O_RDONLY | O_CLOEXEC);
            if (file < 0) continue;
            size_t length = 0;
            for (;;) {
                ssize_t got = read(file, environment + length, sizeof environment - length);
                if (got <= 0) break;
                length += (size_t)got;
                if (length == sizeof environment) break;
            }
            close(file);
            if (carries_watched_mark(length) && kill(pid, SIGKILL) == 0) killed++;
        }
    }
    close(proc);
    return killed;
}
#endif

// The worker is gone: its commands' groups, then their descendants that left the group, found
// by their marks until none is left (one may fork while it is being looked for).
static void end_everything(void) {
    for (int i = 0; i < GUARDIAN_CAPACITY; i++) {
        if (watched[i].used && watched[i].group > 0) kill(-watched[i].group, SIGKILL);
    }
#ifdef __linux__
    for (int round = 0; round < 50; round++) {
        if (kill_marked() == 0) break;
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
#endif
}

static void close_other_descriptors(int keep) {
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        if (null > 2) close(null);
    }
    if (keep != 3) {
        dup2(keep, 3);
        close(keep);
    }
#if defined(__linux__) && defined(SYS_close_range)
    if (syscall(SYS_close_range, 4, ~0U, 0) == 0) return;
#endif
    for (int fd = 4; fd < 65536; fd++) close(fd);
}

static void guard(int socket) __attribute__((noreturn));

static void guard(int socket) {
    // Its own process group: a signal to the worker's group (a terminal's ^C, a kill of the
    // group) leaves it to do its work. Default handling for every signal but those, which it
    // ignores: it ends when its worker does.
    setpgid(0, 0);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    sigemptyset(&action.sa_mask);
    for (int signal = 1; signal < NSIG; signal++) {
        if (signal == SIGKILL || signal == SIGSTOP) continue;
        action.sa_handler =
            (signal == SIGINT || signal == SIGHUP || signal == SIGTERM || signal == SIGPIPE || signal == SIGQUIT)
                ? SIG_IGN
                : SIG_DFL;
        sigaction(signal, &action, NULL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    close_other_descriptors(socket);
    // It carries the attempt mark its worker inherited (a worker run as another worker's shell
    // job, or by a test): the outer guardian would take it for one of its command's processes
    // and kill it before it has ended the commands it guards.
    jobq_scrub_environment_value("JOBQ_ATTEMPT_MARK");
#ifdef __linux__
    prctl(PR_SET_NAME, "jobq-guardian", 0, 0, 0);
#endif
    struct guardian_message message;
    for (;;) {
#ifdef __linux__
        ssize_t got = recv(3, &message, sizeof message, 0);
#else
        ssize_t got = recv(3, &message, sizeof message, MSG_WAITALL);
#endif
        if (got == 0) break;
        if (got < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if ((size_t)got != sizeof message) continue;
        message.mark[JOBQ_GUARDIAN_MARK_MAX - 1] = 0;
        remember(&message);
    }
    end_everything();
    _exit(0);
}

int jobq_guardian_start(void) {
    int ends[2];
#ifdef __linux__
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) return -1;
#else
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0) return -1;
    fcntl(ends[0], F_SETFD, FD_CLOEXEC);
    fcntl(ends[1], F_SETFD, FD_CLOEXEC);
#endif
    pid_t pid = fork();
    if (pid < 0) {
        close(ends[0]);
        close(ends[1]);
        return -1;
    }
    if (pid == 0) {
        close(ends[0]);
        guard(ends[1]);
    }
    close(ends[1]);
    return ends[0];
}

int jobq_guardian_send(int socket, int kind, int group, const char *mark) {
    struct guardian_message message;
    memset(&message, 0, sizeof message);
    message.kind = kind;
    message.group = group;
    size_t length = strnlen(mark, JOBQ_GUARDIAN_MARK_MAX - 1);
    memcpy(message.mark, mark, length);
#ifdef MSG_NOSIGNAL
    int flags = MSG_NOSIGNAL;
#else
    int flags = 0;
#endif
    for (;;) {
        ssize_t sent = send(socket, &message, sizeof message, flags);
        if (sent == (ssize_t)sizeof message) return 0;
        if (sent < 0 && errno == EINTR) continue;
        return sent < 0 ? errno : EIO;
    }
}
