"""SkillForge policies."""
