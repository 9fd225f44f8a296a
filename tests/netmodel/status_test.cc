// Status messages are one line of printable text, whatever an input put into them.
#include "myriad/status.h"

#include <gtest/gtest.h>

namespace myriad {
namespace {

TEST(StatusTest, MessagesAreOneLineWithControlCharactersEscaped) {
  EXPECT_EQ(Status::InvalidArgument("name 'a\nb'").message(), "name 'a\\nb'");
  EXPECT_EQ(Status::NotFound("tab\there\r").message(), "tab\\there\\r");
  EXPECT_EQ(Status::InvalidArgument("\x1b[31mred\x7f").message(), "\\x1b[31mred\\x7f");
  EXPECT_EQ(Status::Internal("plain, caf\xc3\xa9").message(), "plain, caf\xc3\xa9");  // UTF-8 kept
  EXPECT_TRUE(Status::Ok().message().empty());
}

}  // namespace
}  // namespace myriad
