#version 450
// SkillForge's camera shader, fragment stage: one pass, Lambert shading (ambient plus the
// scene's directional lights, no shadows, no specular), written straight to two pictures:
//   Color                 rgba, gamma 2.2
//   PositionSegmentation  int: camera-space position in mm (OpenGL axes, -z forward), entity id
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

layout(location = 0) out vec4 outRgb;
layout(location = 1) out ivec4 outPositionSegmentation;

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
  outRgb = vec4(pow(clamp(rgb, 0.0, 1.0), vec3(1.0 / 2.2)), 1.0);
  outPositionSegmentation = ivec4(ivec3(round(inCameraPosition * 1000.0)), inEntityId);
}
