import CMicroHTTPD
/// The HeraldHTTPServer module (placeholder until its first code lands).
public enum HeraldHTTPServerModule {}
