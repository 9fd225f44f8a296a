#include "engine/log.h"

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <memory>

namespace myriad::emulator::engine {
namespace {

thread_local SimTime log_time = 0;

class VirtualTimeFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string text = fmt::format("{:>16.6f} us", ToMicros(log_time));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<VirtualTimeFlag>();
  }
};

std::shared_ptr<spdlog::logger> MakeLogger() {
  auto logger =
      std::make_shared<spdlog::logger>("myriad", std::make_shared<spdlog::sinks::stderr_sink_st>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<VirtualTimeFlag>('*').set_pattern("[%*] [%l] %v");
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::warn);
  return logger;
}

}  // namespace

spdlog::logger& Log() {
  static const std::shared_ptr<spdlog::logger> logger = MakeLogger();
  return *logger;
}

void SetLogTime(SimTime time) { log_time = time; }

}  // namespace myriad::emulator::engine
