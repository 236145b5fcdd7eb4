import ArgumentParser
import JobQ
import JobQCommandLine

struct JobQCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobq",
        abstract: "A durable job queue on SQLite.",
        discussion: helpText(
            """
            The store is one SQLite file: --db PATH, else $JOBQ_DB, else ./jobq.sqlite.
            Exit codes: 0 success, 1 the job or operation failed, 2 usage or bad input, 3 not found,
            4 events after the cursor given were deleted.
            """),
        version: JobQVersion.current,
        subcommands: [
            DemoCommand.self, EnqueueCommand.self, WorkCommand.self, StatusCommand.self, ListCommand.self,
            ShowCommand.self, CancelCommand.self, RetryCommand.self, DeleteCommand.self, PauseCommand.self,
            ResumeCommand.self,
            PruneCommand.self, MigrateCommand.self, EventsCommand.self, WaitCommand.self, BatchCommand.self,
            TrackCommand.self, WorkflowCommand.self, LaneCommand.self, ScheduleCommand.self, TriggerCommand.self,
            EmitCommand.self, DashboardCommand.self, QueueCommand.self, RetentionCommand.self, IndexCommand.self,
            CopyCommand.self, SignalCommand.self, TokenCommand.self, StatsCommand.self
        ]
    )
}
