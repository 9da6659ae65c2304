"""fibermpi.init(**settings): fiber.yaml's keys from the program (a bad one is a ConfigError naming
it, and the runtime can still start), spawn.env reaching a Process, and a second init refused."""

import os
import sys

import fibermpi as mp


def exit_with_setting():
    sys.exit(int(os.environ["FIBERMPI_TEST_SETTING"]))


if __name__ == "__main__":
    try:
        mp.init(no_such_key=1)
    except mp.ConfigError as error:
        print("CONFIG ERROR:", error, flush=True)
    mp.init(spawn={"env": {"FIBERMPI_TEST_SETTING": "42"}}, heartbeat_timeout="20s")
    try:
        mp.init()
    except mp.UsageError as error:
        print("USAGE ERROR:", error, flush=True)
    process = mp.Process(target=exit_with_setting)
    process.start()
    process.join()
    print("EXITCODE", process.exitcode, flush=True)
