import HeraldSender

/// What the scheduler needs from a sender: hand over requests without blocking. The pool
/// implements it; tests may use a fake (style: the scheduler talks to the sender through a
/// protocol).
public protocol PushTransport: AnyObject, Sendable {
    /// Accepts all of `requests`, or none when full (then try again after some complete).
    func trySubmit(_ requests: [APNSRequest]) -> Bool
}

extension APNSClientPool: PushTransport {}
