// fibermpi: Python multiprocessing's programming model (Process, Pool, SimpleQueue, Pipe) on MPI,
// and fiber::Group for SPMD codes.
#pragma once

#include "fiber/errors.h"
#include "fiber/group.h"
#include "fiber/init.h"
#include "fiber/manager.h"
#include "fiber/pipe.h"
#include "fiber/pool.h"
#include "fiber/process.h"
#include "fiber/queue.h"
#include "fiber/simple_queue.h"
