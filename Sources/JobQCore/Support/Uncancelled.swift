/// Runs `operation` to its end even if the calling task is cancelled meanwhile, and returns
/// its result; the caller reacts to its own cancellation afterwards.
///
/// For store calls whose effect the caller must learn once it is committed. A claim commits
/// on the server before its answer is read, and postgres-nio stops reading an answer when the
/// reading task is cancelled: a worker cancelled at that moment would leave the jobs it had
/// just claimed held by no one until their lease ran out, instead of releasing them. The
/// operation starts on the calling thread (`Task.immediate` where the compiler has it), so
/// the shield costs no thread hand-off (on the claim loop's executor, where it has one).
func uncancelled<T: Sendable>(_ operation: sending @escaping @isolated(any) () async throws -> T) async throws -> T {
    #if compiler(>=6.2)
        try await Task.immediate(executorPreference: WokenHereExecutor.current, operation: operation).value
    #else
        try await Task(operation: operation).value
    #endif
}
