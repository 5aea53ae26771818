import CSystem
import Foundation
import Glibc
import HeraldCore

/// Opens a TCP connection: a fresh DNS lookup off the loop (Apple asks for one per new
/// connection, reference §1.3), then every resolved address in turn, each with a deadline
/// (`localhost` is both `::1` and `127.0.0.1`; a peer on one family must still be reached).
final class Connector: FDHandler {
    let loop: EventLoop
    let target: HostPort
    let timeout: Double
    private var addresses: [SocketAddress] = []
    private var fd: Int32 = -1
    private var timer: LoopTimer?
    private var errors: [String] = []
    private var completion: ((Result<Int32, NetError>) -> Void)?

    init(loop: EventLoop, target: HostPort, timeout: Double) {
        self.loop = loop
        self.target = target
        self.timeout = timeout
    }

    /// Starts connecting; `completion` runs on the loop exactly once. Loop thread only.
    func start(_ completion: @escaping (Result<Int32, NetError>) -> Void) {
        self.completion = completion
        let target = self.target
        let box = UncheckedBox(self)
        DispatchQueue.global().async {
            let result = Result { try Socket.resolve(target.host, port: target.port) }
            box.value.loop.executeUnchecked {
                let me = box.value
                switch result {
                case .success(let addrs) where !addrs.isEmpty:
                    me.addresses = addrs
                    me.tryNext()
                case .success:
                    me.finish(.failure(.resolve(host: target.host, message: "no addresses")))
                case .failure(let e):
                    me.finish(.failure(e as? NetError ?? .resolve(host: target.host, message: "\(e)")))
                }
            }
        }
    }

    private func tryNext() {
        guard !addresses.isEmpty else {
            finish(.failure(.connect(host: target.host, port: target.port, message: errors.joined(separator: "; "))))
            return
        }
        let addr = addresses.removeFirst()
        do {
            fd = try Socket.startConnect(addr)
            try loop.register(fd: fd, interest: .writable, handler: self)
            timer = loop.schedule(after: timeout) { [weak self] in
                guard let self else { return }
                self.errors.append("\(addr): timed out after \(self.timeout)s")
                self.abandonCurrent()
                self.tryNext()
            }
        } catch {
            errors.append("\(addr): \(error)")
            if fd >= 0 {
                Sys.close(fd)
                fd = -1
            }
            tryNext()
        }
    }

    private func abandonCurrent() {
        timer?.cancel()
        timer = nil
        if fd >= 0 {
            loop.unregister(fd: fd)
            Sys.close(fd)
            fd = -1
        }
    }

    func handleEvents(_ events: IOEvents) {
        guard fd >= 0 else { return }
        let err = Socket.pendingError(fd)
        if err == 0 {
            timer?.cancel()
            timer = nil
            loop.unregister(fd: fd)
            let connected = fd
            fd = -1
            finish(.success(connected))
        } else {
            errors.append("\(String(cString: strerror(err)))")
            abandonCurrent()
            tryNext()
        }
    }

    private func finish(_ r: Result<Int32, NetError>) {
        let c = completion
        completion = nil
        c?(r)
    }
}
