/// The version of jobq, as `jobq --version` prints it.
public enum JobQVersion {
    public static let current = "0.1.0"
}
