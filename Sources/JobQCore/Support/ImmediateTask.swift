/// Starts an unstructured task that runs on the calling thread until its first suspension
/// (`Task.immediate`, Swift 6.2 and later; a plain `Task` before).
///
/// The worker starts each executor this way: an executor that finishes without suspending
/// (most short jobs) runs start to end without a thread hand-off, and its slot finds the
/// result waiting instead of being woken for it. The task can still be cancelled, and the slot
/// can still stop waiting for it, as with any task; but an executor that blocks its thread
/// without ever suspending keeps its slot's thread too until it does.
@discardableResult
func startImmediately(_ operation: sending @escaping @isolated(any) () async -> Void) -> Task<Void, Never> {
    #if compiler(>=6.2)
        Task.immediate(executorPreference: WokenHereExecutor.current, operation: operation)
    #else
        Task(operation: operation)
    #endif
}

extension DiscardingTaskGroup {
    /// Adds a child task that runs on the calling thread until its first suspension
    /// (`addImmediateTask`, Swift 6.2 and later; `addTask` before).
    mutating func addTaskStartingHere(_ operation: sending @escaping @isolated(any) () async -> Void) {
        #if compiler(>=6.2)
            addImmediateTask(operation: operation)
        #else
            addTask(operation: operation)
        #endif
    }
}
