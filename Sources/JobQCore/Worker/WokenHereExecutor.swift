import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The task executor of a worker pool's claim loop: the loop runs on Dispatch's global queue,
/// as any task would, except right after a store's watcher woke it from its own thread
/// (``runWokenHere(_:)``): then the loop resumes on that very thread, claims there, and starts
/// the job it claimed there too (a lone job runs on its slot's thread until it suspends).
///
/// Why: an idle worker is woken by another process's commit on the watcher's thread, and
/// handing the loop over to another thread cost a thread wake-up, timed at a median 290 µs of a
/// 1.26 ms pick-up on a 2-core VM (the bench's median moved less: `Performance.md`).
///
/// Only the first job enqueued by the waking thread during ``runWokenHere(_:)`` runs there
/// (the claim loop's resumption); everything else, on any thread, goes to Dispatch. A job run
/// here returns to the caller at its first suspension.
final class WokenHereExecutor: TaskExecutor {
    /// The thread that may run the next job itself, while it wakes the loop.
    private let waker = Mutex<pthread_t?>(nil)

    func enqueue(_ job: consuming ExecutorJob) {
        let current = pthread_self()
        let here = waker.withLock { waker -> Bool in
            guard let thread = waker, pthread_equal(thread, current) != 0 else { return false }
            waker = nil
            return true
        }
        if here {
            job.runSynchronously(on: asUnownedTaskExecutor())
        } else {
            let job = UnownedJob(job)
            DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    /// Calls `wake`, which resumes the claim loop: if the loop waited, it runs on this thread
    /// before `wake` returns, up to its first suspension. Call only from a thread that runs no
    /// Swift task and holds no lock the loop may take.
    func runWokenHere(_ wake: () -> Void) {
        waker.withLock { $0 = pthread_self() }
        defer { waker.withLock { $0 = nil } }
        wake()
    }
}

extension WokenHereExecutor {
    /// The executor of the claim loop the current task belongs to, if it has one. Immediate
    /// tasks started there (``startImmediately(_:)``, ``uncancelled(_:)``) prefer it too: one
    /// with no preference, started on a thread that runs this executor's job, would leave that
    /// thread for the global executor at once.
    @TaskLocal static var current: WokenHereExecutor?
}
