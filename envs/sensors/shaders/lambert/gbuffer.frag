#version 450
// SkillForge's camera shader, fragment stage: one pass, Lambert shading (ambient plus the
// scene's directional lights, no shadows, no specular), written straight to ONE int picture,
// "Camera", so that a camera costs one read-back whatever the obs mode:
//   x  colour, gamma 2.2, packed r | g << 8 | b << 16
//   y  depth along the optical axis, micrometres
//   z  entity id (segmentation)
//   w  1 where a surface was drawn (the picture is cleared to 0)
// It replaces SAPIEN's physically based shaders because software rendering (lavapipe) pays for
// every instruction per pixel; see docs/PERFORMANCE.md, "Cameras".

layout(constant_id = 0) const int NUM_DIRECTIONAL_LIGHTS = 0;

layout(set = 0, binding = 0) uniform CameraBuffer {
  mat4 viewMatrix;
  mat4 projectionMatrix;
  mat4 viewMatrixInverse;
  mat4 projectionMatrixInverse;
  float width;
  float height;
} cameraBuffer;

layout(set = 2, binding = 0) uniform MaterialBuffer {
  vec4 emission;
  vec4 baseColor;
  float fresnel;
  float roughness;
  float metallic;
  float transmission;
  float ior;
  float transmissionRoughness;
  int textureMask;
  int padding1;
  vec4 textureTransforms[6];
} materialBuffer;

layout(set = 2, binding = 1) uniform sampler2D colorTexture;

struct PointLight {
  vec4 position;
  vec4 emission;
};
struct DirectionalLight {
  vec4 direction;
  vec4 emission;
};
struct SpotLight {
  vec4 position;
  vec4 direction;
  vec4 emission;
};

layout(set = 3, binding = 0) uniform SceneBuffer {
  vec4 ambientLight;
  DirectionalLight directionalLights[3];
  SpotLight spotLights[10];
  PointLight pointLights[10];
  SpotLight texturedLights[1];
} sceneBuffer;

layout(location = 0) in vec3 inCameraPosition;
layout(location = 1) in vec3 inCameraNormal;
layout(location = 2) in vec2 inUV;
layout(location = 3) in flat int inEntityId;

layout(location = 0) out ivec4 outCamera;

void main() {
  vec4 albedo = materialBuffer.baseColor;
  if ((materialBuffer.textureMask & 1) != 0) {
    vec4 t = materialBuffer.textureTransforms[0];
    albedo = texture(colorTexture, inUV * t.zw + t.xy);
  }
  vec3 n = normalize(inCameraNormal);
  if (!gl_FrontFacing) {
    n = -n;
  }
  vec3 light = sceneBuffer.ambientLight.rgb;
  for (int i = 0; i < NUM_DIRECTIONAL_LIGHTS; ++i) {
    vec3 towards = -normalize(mat3(cameraBuffer.viewMatrix) * sceneBuffer.directionalLights[i].direction.xyz);
    light += max(dot(n, towards), 0.0) * sceneBuffer.directionalLights[i].emission.rgb;
  }
  vec3 rgb = materialBuffer.emission.rgb + albedo.rgb * light;
  ivec3 c = ivec3(round(pow(clamp(rgb, 0.0, 1.0), vec3(1.0 / 2.2)) * 255.0));
  int depth = int(round(-inCameraPosition.z * 1.0e6));  // OpenGL camera space looks along -z
  outCamera = ivec4(c.r | (c.g << 8) | (c.b << 16), depth, inEntityId, 1);
}
