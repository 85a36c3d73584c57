#pragma once

namespace rths {

// Process exit codes of rths-numerical and rths-physical (docs/running.md, "Exit codes"): a script can tell why
// a test ended without reading logs. Every code but 1 and 2 follows a safe stop with recordings flushed.
enum ExitCode : int {
  kExitCompleted = 0,     // every step ran
  kExitFailure = 1,       // an internal error (message on stderr and in run.log)
  kExitBadInput = 2,      // bad command line or config: nothing ran
  kExitRefused = 3,       // handshake refused: the ends disagree (the message names the field)
  kExitPeerLost = 4,      // no packet from a peer within realtime.peer_timeout_s
  kExitPeerAborted = 5,   // the peer aborted the test (its reason is logged)
  kExitInterrupted = 6,   // SIGINT/SIGTERM: safe stop
  kExitNoAnswer = 7,      // a peer never answered the handshake
  kExitLimit = 8,         // a site's interlock tripped: a value beyond a limit or not finite
  kExitNonFinite = 9,     // a non-finite or diverged value: the run stopped
  kExitEquipment = 10,    // a site's equipment (its plant driver) did not answer, or answered wrongly
  kExitDelayBudget = 11,  // a site's measured round trip passed its planned delay budget (delay_guard)
};

}  // namespace rths
