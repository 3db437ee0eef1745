#include "sdl_window.hpp"

#include "platoon/viewer/viewer_app.hpp"

#include <imgui.h>
#include <imgui_impl_opengl3.h>
#include <imgui_impl_sdl.h>

namespace platoon::viewer {

SdlGlWindow::SdlGlWindow(const std::string& title, int width, int height, bool vsync) {
  // What was made before a failing step is released in reverse order.
  try {
    Open(title, width, height, vsync);
  } catch (...) {
    Release();
    throw;
  }
}

void SdlGlWindow::Open(const std::string& title, int width, int height, bool vsync) {
  if (SDL_Init(SDL_INIT_VIDEO) != 0)
    throw WindowError(std::string("cannot initialise SDL video: ") + SDL_GetError() +
                      " (no display? run under xvfb-run -a -s \"-screen 0 1280x1024x24\")");
  sdl_ = true;
  // OSG draws with the fixed-function pipeline: ask for a compatibility context (no profile mask).
  SDL_GL_SetAttribute(SDL_GL_DOUBLEBUFFER, 1);
  SDL_GL_SetAttribute(SDL_GL_DEPTH_SIZE, 24);
  SDL_GL_SetAttribute(SDL_GL_STENCIL_SIZE, 8);
  SDL_GL_SetAttribute(SDL_GL_RED_SIZE, 8);
  SDL_GL_SetAttribute(SDL_GL_GREEN_SIZE, 8);
  SDL_GL_SetAttribute(SDL_GL_BLUE_SIZE, 8);
  window_ = SDL_CreateWindow(title.c_str(), SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, width, height,
                             SDL_WINDOW_OPENGL | SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI);
  if (!window_) throw WindowError(std::string("cannot create the viewer window: ") + SDL_GetError());
  context_ = SDL_GL_CreateContext(window_);
  if (!context_) throw WindowError(std::string("cannot create an OpenGL context: ") + SDL_GetError());
  SDL_GL_MakeCurrent(window_, context_);
  SDL_GL_SetSwapInterval(vsync ? 1 : 0);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  imgui_ = true;
  ImGui::GetIO().IniFilename = nullptr;  // no imgui.ini in the working directory
  ImGui::StyleColorsDark();
  if (!ImGui_ImplSDL2_InitForOpenGL(window_, context_)) throw WindowError("Dear ImGui: SDL2 backend failed to start");
  imgui_sdl_ = true;
  if (!ImGui_ImplOpenGL3_Init("#version 130")) throw WindowError("Dear ImGui: OpenGL 3 backend failed to start");
  imgui_gl_ = true;
}

SdlGlWindow::~SdlGlWindow() { Release(); }

void SdlGlWindow::Release() {
  if (imgui_gl_) ImGui_ImplOpenGL3_Shutdown();
  if (imgui_sdl_) ImGui_ImplSDL2_Shutdown();
  if (imgui_) ImGui::DestroyContext();
  if (context_) SDL_GL_DeleteContext(context_);
  if (window_) SDL_DestroyWindow(window_);
  if (sdl_) SDL_Quit();
  imgui_gl_ = imgui_sdl_ = imgui_ = sdl_ = false;
  context_ = nullptr;
  window_ = nullptr;
}

void SdlGlWindow::BeginUi() {
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplSDL2_NewFrame();
  ImGui::NewFrame();
}

void SdlGlWindow::EndUi() {
  ImGui::Render();
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

}  // namespace platoon::viewer
