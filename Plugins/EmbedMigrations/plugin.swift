import Foundation
import PackagePlugin

/// Feeds every `Migrations/NNNN_name.sql` file of the package to `MigrationEmbedder`, which writes
/// them out as one Swift source file of string literals. Listing the files as inputs makes the
/// build regenerate the source whenever a migration is added or edited. The PostgreSQL store's
/// target gets `Migrations/postgres/` instead.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        var directory = context.package.directoryURL.appending(path: "Migrations")
        if target.name == "JobQPostgres" { directory = directory.appending(path: "postgres") }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
        let inputs = names.map { directory.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(inputs.count) schema migrations",
                executable: try context.tool(named: "MigrationEmbedder").url,
                arguments: [output.path] + inputs.map(\.path),
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
