"""Every task module registers its env id on import."""

from envs.tasks import pick_cube, pull_cube, push_cube, stack_cube  # noqa: F401
