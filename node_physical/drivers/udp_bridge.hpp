#pragma once

#include <memory>

#include "experiment.pb.h"
#include "node_physical/interfaces/plant_driver.hpp"

namespace rths {

// A site's channels driven through a real-time target (Speedgoat, dSPACE, NI LabVIEW RT, a
// servo-controller's PC interface) that exchanges one fixed binary UDP datagram per step
// (config UdpBridge; docs/plant-drivers.md has the protocol and the layout table). With a setup
// transformation the datagrams carry the setup's actuators instead of the channels (strokes and
// load-cell forces), and make_plant_driver puts a SetupDriver in front.
//
// open() sends read-only probes (counter 0) until the target answers or open_timeout_s passes, and
// returns the actuators' positions and forces. Each exchange() sends the step's commands with the
// next counter (1, 2, ...; ENABLE 1) and sleeps in ppoll() until the reply echoing that counter
// arrives or reply_timeout_s has passed since the send (the timeout, which validation keeps within
// half a step, bounds the wait; datagrams already waiting when it passes are still read, up to 64:
// the thread may have been held up while the reply arrived in time). Sleeping rather than spinning
// leaves the CPU to others: on a shared machine the target itself may need it to answer. Replies
// echoing an earlier step's counter are discarded (driver_status::kReplyLate), and so are answers to
// probes that arrive after open() returned (counted, flagging no step); no reply by the deadline
// holds the last measurement (kReplyMissing) and max_missed_replies of those in a row stop the site;
// a reply of the wrong size stops it at once; datagrams from any other address are ignored and
// counted. The target's status word (its low 16 bits) is bits 16-31 of status(c). exchange()
// allocates, locks and logs nothing.
//
// Throws DriverError when the socket cannot be bound or the target's address not resolved.
std::unique_ptr<PlantDriver> make_udp_bridge(const config::UdpBridge& bridge, const config::Site& site, double rate_hz);

}  // namespace rths
