/// The HeraldAPI module (placeholder until its first code lands).
public enum HeraldAPIModule {}
