"""Every task module registers its env id on import."""

from envs.tasks import pick_cube, two_robot_pick_cube  # noqa: F401
