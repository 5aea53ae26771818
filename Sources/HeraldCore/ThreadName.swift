import CSystem

/// Names the calling thread, as `top -H`, `perf` and `/proc/PID/task/*/comm` show it.
/// (Foundation's `Thread.name` set before `start()` does not reach the kernel on Linux: the
/// threads showed as the process's name or as the thread that created them.)
public enum ThreadName {
    /// Linux keeps at most 15 bytes.
    public static func set(_ name: String) {
        _ = herald_set_thread_name(String(decoding: name.utf8.prefix(15), as: UTF8.self))
    }

    /// The calling thread's name as the kernel has it.
    public static var current: String {
        var buf = [CChar](repeating: 0, count: 16)
        _ = herald_get_thread_name(&buf)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
