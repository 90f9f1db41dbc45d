"""SkillForge demos."""
