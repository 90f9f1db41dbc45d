"""Robot variants: `panda` carries no camera, `panda_wristcam` is the same arm with ManiSkill's
hand camera, accepted wherever its family `panda` is."""

import math

import pytest


def test_panda_has_no_camera_and_panda_wristcam_has_maniskills():
    from envs.robots import get_robot, robot_family

    assert get_robot("panda").cameras == ()
    (cam,) = get_robot("panda_wristcam").cameras
    assert (cam.uid, cam.mount, cam.width, cam.height) == ("hand_camera", "camera_link", 128, 128)
    assert (cam.fov, cam.near, cam.far, cam.pose) == (math.pi / 2, 0.01, 100.0, (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0))
    assert robot_family("panda_wristcam") == "panda"
    wrist, arm = get_robot("panda_wristcam"), get_robot("panda")
    assert (wrist.arm_joints, wrist.rest_qpos, wrist.arm_drive) == (arm.arm_joints, arm.rest_qpos, arm.arm_drive)


def test_panda_wristcam_is_accepted_where_panda_is(make):
    env = make("PickCube-v1", num_envs=1, robot_uids="panda_wristcam")
    env.reset(seed=0)
    base = env.unwrapped
    assert [c.uid for c in base._default_sensor_configs()][-1] == "hand_camera"
    assert "camera_link" in [link.name for link in base.agent.spec.model.links]
    with pytest.raises(ValueError, match="does not support robot"):
        make("PegInsertionSide-v1", num_envs=1, robot_uids="ur5e")


def test_panda_wristcam_urdf_is_panda_plus_the_camera():
    """The two URDFs stay one arm: every link and joint of panda's file is in panda_wristcam's, equal,
    but the finger pads (frames without mass in ManiSkill's panda_v2, absent from its panda_v3)."""
    from envs.robots import get_robot

    arm, wrist = get_robot("panda").model, get_robot("panda_wristcam").model
    wrist_joints = {j.name: j for j in wrist.joints}
    wrist_links = {link.name: link for link in wrist.links}
    pads = {f"panda_{side}finger_pad" for side in ("left", "right")}
    assert {link.name for link in arm.links} - set(wrist_links) == pads
    assert all(wrist_joints[j.name] == j for j in arm.joints if j.child not in pads)
    assert all(wrist_links[link.name] == link for link in arm.links if link.name not in pads)
    assert set(wrist_joints) - {j.name for j in arm.joints} == {"realsense_joint", "camera_link_joint"}
    assert [j.name for j in arm.joints if j.mimic] == [j.name for j in wrist.joints if j.mimic] == ["panda_finger_joint2"]
