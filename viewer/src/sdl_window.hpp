#pragma once
// Private to platoon_viewer: an SDL2 window with an OpenGL (compatibility) context and Dear ImGui bound
// to both, created and torn down in the right order (RAII).

#include <SDL.h>

#include <string>

namespace platoon::viewer {

class SdlGlWindow {
 public:
  // Throws WindowError naming SDL's reason.
  SdlGlWindow(const std::string& title, int width, int height, bool vsync);
  ~SdlGlWindow();
  SdlGlWindow(const SdlGlWindow&) = delete;
  SdlGlWindow& operator=(const SdlGlWindow&) = delete;

  SDL_Window* Window() const { return window_; }
  // Size of the GL drawable, in px (equals the window size without HiDPI scaling).
  void DrawableSize(int* width, int* height) const { SDL_GL_GetDrawableSize(window_, width, height); }
  // Starts an ImGui frame (after the 3D view has rendered).
  void BeginUi();
  // Renders the ImGui frame into the back buffer.
  void EndUi();
  void Swap() { SDL_GL_SwapWindow(window_); }

 private:
  void Open(const std::string& title, int width, int height, bool vsync);
  void Release();

  SDL_Window* window_ = nullptr;
  SDL_GLContext context_ = nullptr;
  bool sdl_ = false, imgui_ = false, imgui_sdl_ = false, imgui_gl_ = false;
};

}  // namespace platoon::viewer
