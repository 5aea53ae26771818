import CNghttp2
/// The HeraldNet module (placeholder until its first code lands).
public enum HeraldNetModule {}
