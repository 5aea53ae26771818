import Foundation
import HeraldCore

/// A progress line on standard error: on a terminal one line redrawn in place with `\r`;
/// otherwise (a log, a pipe) a new line at most every `interval` seconds, the first at once.
final class LiveLine {
    private let console: Console
    private let interval: Double
    private var lastPrinted: Double?
    private var drawn = false

    init(console: Console, interval: Double = 2) {
        self.console = console
        self.interval = interval
    }

    /// Shows `text` (now on a terminal; when the interval has passed otherwise).
    func update(_ text: String, now: Double = Monotonic.seconds()) {
        if console.isTTY {
            // \r back to the start, ESC[K clears what a longer previous line left.
            console.write("\r" + text + "\u{1B}[K", toError: true)
            drawn = true
        } else if lastPrinted.map({ now - $0 >= interval }) ?? true {
            console.error(text)
            lastPrinted = now
        }
    }

    /// Ends the redrawn line so what follows starts on its own line.
    func finish() {
        if drawn { console.write("\n", toError: true) }
        drawn = false
    }
}

/// A rate over a sliding window of (time, count) samples, for progress lines.
struct RateMeter {
    private var samples: [(t: Double, n: Int64)] = []
    let window: Double

    init(window: Double = 3) { self.window = window }

    mutating func record(_ n: Int64, at t: Double) {
        samples.append((t, n))
        while let first = samples.first, t - first.t > window, samples.count > 2 { samples.removeFirst() }
    }

    /// Units per second over the window; nil until two samples span some time.
    var perSecond: Double? {
        guard let a = samples.first, let b = samples.last, b.t - a.t > 0.05 else { return nil }
        return Double(b.n - a.n) / (b.t - a.t)
    }
}
