/// The HeraldFanout module (placeholder until its first code lands).
public enum HeraldFanoutModule {}
