// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ib2roce: the multicast bridge between an InfiniBand port and a RoCEv2 port.
 *
 * main() runs the phases of app.h (start.c): parse the options and config files
 * (app_parse), detach (app_detach), open both ports and build the engine (app_engine),
 * register the control thread's modules and start the workers (app_control), run the
 * control thread until a stop (app_run: then the workers stop, the final counters, the
 * leaves), and close what the phases opened, in reverse. Exit status: 0 after a clean shutdown, 1
 * when the bridge could not start or failed, 2 for invalid options or configuration.
 *
 * Modes: --debug stays in the foreground, logs to stderr and reads console commands from
 * the terminal; --systemd (or NOTIFY_SOCKET in the environment) stays in the foreground,
 * logs to the journal and speaks sd_notify; otherwise it daemonizes and logs to syslog.
 * Every mode serves the console socket and holds the pid file lock.
 */
#include "app.h"
#include "bridge.h"

int main(int argc, char **argv)
{
	static struct app a = {
		.o = {.br = &a.br,
		      .ctl = &a.ctl,
		      .cfg = &a.br.cfg,
		      .gd = {.fmt = MGID_RDMA,
			     .port = DEFAULT_PORT,
			     .tos = -1,
			     .qkey = BR_UDP_QKEY},
		      .control_cpu = -1},
		.ccfg = {.listen_fd = -1, .admit_gid = (gid_t)-1},
		.report = -1,
		.pidfd = -1,
	};
	int r = app_parse(&a, argc, argv);

	if (r >= 0)
		return r; /* --version, --tune-check, a bad option ... */
	if (a.o.show_placement) {
		urcu_qsbr_register_thread();
		a.status = dry_run_placement(&a.o, &a.br);
		goto out_engine;
	}
	if (app_detach(&a))
		goto out;
	urcu_qsbr_register_thread();
	if (app_engine(&a)) /* --check ends here too */
		goto out_engine;
	if (app_control(&a))
		goto out_ctl;
	app_run(&a);
out_ctl:
	app_close_control(&a);
out_engine:
	app_close_engine(&a);
out:
	app_close(&a);
	return a.status;
}
