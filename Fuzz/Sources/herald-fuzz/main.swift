import Foundation

// Fuzz build (scripts/fuzz, -DHERALD_FUZZING): libFuzzer's driver runs the target chosen by
// HERALD_FUZZ_TARGET. Plain build (`swift build`): the same targets replay the files and
// folders given as arguments once each, so the regression corpus runs without libFuzzer.
#if HERALD_FUZZING
exit(LibFuzzer.run())
#else
exit(Replay.run(Array(CommandLine.arguments.dropFirst())))
#endif
