// The Boost.MPI view of a fiber::Group's communicator, for codes written against Boost.MPI. A
// program that includes this links Boost.MPI itself (find_package(Boost COMPONENTS mpi),
// Boost::mpi), as any Boost.MPI user does; fibermpi's own library does not.
//
// fiber::init initialises MPI at MPI_THREAD_MULTIPLE (which fibermpi needs): call it first, and
// make no boost::mpi::environment (its default would initialise MPI single-threaded, and one
// made after fiber::init would finalise MPI under fibermpi's feet). The view needs none.
#pragma once

#include <boost/mpi/communicator.hpp>

#include "fiber/mpi.h"

namespace fiber {

/// Inside a member of a fiber::Group: fiber::group_comm() as a boost::mpi::communicator,
/// attached, not owned (it never frees the communicator). Throws fiber::UsageError outside a
/// member.
inline boost::mpi::communicator group_communicator() {
  return boost::mpi::communicator(group_comm(), boost::mpi::comm_attach);
}

}  // namespace fiber
