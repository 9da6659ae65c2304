// The Boost.MPI view of a group's communicator (fiber/boost_mpi.h): Boost.MPI collectives on it,
// a serialized type among them, the view attached and not owned (the communicator outlives
// it), one libmpi in every process (Debian's Boost.MPI is built against Open MPI 4.1; Open MPI 5
// keeps its C ABI and soname, libmpi.so.40), and the view's error outside a member.
#include <gtest/gtest.h>

#include <boost/mpi/collectives.hpp>
#include <boost/serialization/string.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "fiber/boost_mpi.h"
#include "fiber/fiber.h"
#include "test_support.h"

using namespace std::chrono_literals;

namespace {

// Distinct libmpi files mapped into this process.
int libmpi_copies() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> paths;
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const auto name = path.substr(path.rfind('/') + 1);
    if (name.rfind("libmpi.so", 0) == 0) paths.insert(path);
  }
  return static_cast<int>(paths.size());
}

// {rank, size, all_reduce of rank + 1, broadcast string arrived, libmpi copies, then the
// all_gathered rank * 10 of every member}.
void boost_view(fiber::SimpleQueue<std::vector<int>> out) {
  std::vector<int> report;
  {
    boost::mpi::communicator comm = fiber::group_communicator();
    const int sum = boost::mpi::all_reduce(comm, comm.rank() + 1, std::plus<int>());
    std::string greeting = comm.rank() == 0 ? "from the root" : "";
    boost::mpi::broadcast(comm, greeting, 0);
    std::vector<int> gathered;
    boost::mpi::all_gather(comm, comm.rank() * 10, gathered);
    report = {comm.rank(), comm.size(), sum, greeting == "from the root" ? 1 : 0, libmpi_copies()};
    report.insert(report.end(), gathered.begin(), gathered.end());
  }
  // The view is gone; the communicator is not.
  boost::mpi::communicator again = fiber::group_communicator();
  again.barrier();
  out.put(report);
}

}  // namespace

TEST(GroupBoost, CollectivesThroughTheView) {
  EXPECT_EQ(libmpi_copies(), 1);
  fiber::SimpleQueue<std::vector<int>> out;
  fiber::Group group(3, boost_view, out);
  group.start();
  std::set<int> ranks;
  for (int i = 0; i < 3; ++i) {
    const auto report = out.get(60s);
    ASSERT_EQ(report.size(), 8u);
    ranks.insert(report[0]);
    EXPECT_EQ(report[1], 3);
    EXPECT_EQ(report[2], 6);
    EXPECT_EQ(report[3], 1);
    EXPECT_EQ(report[4], 1) << "more than one libmpi is loaded in a member";
    EXPECT_EQ(report[5], 0);
    EXPECT_EQ(report[6], 10);
    EXPECT_EQ(report[7], 20);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2}));
  group.join();
  for (const auto& code : group.exitcodes()) EXPECT_EQ(code, 0);
}

TEST(GroupBoost, TheViewOutsideAMemberIsAUsageError) {
  EXPECT_THROW(fiber::group_communicator(), fiber::UsageError);
}
