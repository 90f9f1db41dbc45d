"""SkillForge replay."""
