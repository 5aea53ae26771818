/// The HeraldStore module (placeholder until its first code lands).
public enum HeraldStoreModule {}
