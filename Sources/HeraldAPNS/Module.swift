/// The HeraldAPNS module (placeholder until its first code lands).
public enum HeraldAPNSModule {}
