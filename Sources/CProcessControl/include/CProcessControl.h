#ifndef CPROCESSCONTROL_H
#define CPROCESSCONTROL_H

/// Creates a pipe whose two ends are close-on-exec from the start (pipe2 with O_CLOEXEC where
/// the system has it), so that no child spawned by another thread in between inherits them.
/// Returns 0, or -1 with errno set.
int jobq_pipe_cloexec(int ends[2]);

/// Makes the calling process the reaper of its orphaned descendants (Linux's
/// PR_SET_CHILD_SUBREAPER); does nothing elsewhere. Returns 0, or -1 with errno set.
int jobq_become_child_subreaper(void);

/// Adds to `actions` the closing of every descriptor from `lowest` up in the child
/// (posix_spawn_file_actions_addclosefrom_np, glibc 2.34 and later), so that a child gets its
/// standard streams and nothing else, whatever this process inherited or opened without
/// close-on-exec. Returns 0, or an error number (ENOSYS where the system lacks it).
int jobq_spawn_close_from(void *actions, int lowest);

/// Overwrites with zero bytes, in place, the value of every `name=value` entry of this
/// process's environment, so that neither `getenv` nor another process reading
/// `/proc/PID/environ` (the block the process started with, where an entry stays unless it is
/// set again) sees it any more. Returns how many entries were scrubbed.
int jobq_scrub_environment_value(const char *name);

/// The longest mark (`NAME=VALUE`, with its NUL) a guardian keeps.
#define JOBQ_GUARDIAN_MARK_MAX 96

/// What a message to the guardian says about a mark: a command with it is about to start; its
/// process group is `group`; it ended (the guardian forgets it).
enum { JOBQ_GUARDIAN_WATCH = 1, JOBQ_GUARDIAN_GROUP = 2, JOBQ_GUARDIAN_FORGET = 3 };

/// Forks this process's guardian (CommandGuardian.c): a process that, once this one has died
/// however it died, kills the process groups and the marked processes it was told about.
/// Returns this process's end of the socket to it (close-on-exec), or -1 with errno set.
int jobq_guardian_start(void);

/// Tells the guardian at `socket` about `mark`. Returns 0, or an error number (EPIPE when the
/// guardian is gone); never raises SIGPIPE.
int jobq_guardian_send(int socket, int kind, int group, const char *mark);

#endif
