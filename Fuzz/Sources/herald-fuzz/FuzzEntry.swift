import Foundation

#if HERALD_FUZZING
/// Hands the process to libFuzzer (fuzz builds only, see scripts/fuzz).
///
/// SwiftPM's own `--sanitize=fuzzer` links libFuzzer's `main()` into every executable of
/// the build, the EmbedMigrations plugin's tool included, which then has two. So the fuzz
/// build instruments with `-sanitize=address -sanitize-coverage=…`, links
/// `libclang_rt.fuzzer_no_main` (no `main()`), and this target's own `main` calls the driver.
enum LibFuzzer {
    /// `int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*cb)(const uint8_t *, size_t))`
    /// from libFuzzer. (Declared here rather than in a C module: its three arguments are
    /// pointers, passed the same way by Swift's and C's conventions on x86_64 and arm64.)
    @_silgen_name("LLVMFuzzerRunDriver")
    static func driver(
        _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// Runs libFuzzer with the process's arguments; returns its exit status. Main thread.
    static func run() -> CInt {
        _ = FuzzTargets.selected  // a wrong HERALD_FUZZ_TARGET exits before fuzzing starts
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        return driver(&argc, &argv) { data, size in
            FuzzTargets.selected.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
            return 0
        }
    }
}

#endif

/// Runs every file given (a folder: every file in it) through the selected target once:
/// the regression corpus in a plain build. A finding traps, as under libFuzzer.
enum Replay {
    static func run(_ paths: [String]) -> CInt {
        let target = FuzzTargets.selected
        var count = 0
        for path in paths {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else {
                FileHandle.standardError.write(Data("herald-fuzz: no such file or folder: \(path)\n".utf8))
                return 2
            }
            let files =
                isDir.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 } : [path]
            for f in files {
                guard let data = FileManager.default.contents(atPath: f) else { continue }
                target.run([UInt8](data))
                count += 1
            }
        }
        print("herald-fuzz: \(target.name): replayed \(count) inputs, no finding")
        return 0
    }
}
