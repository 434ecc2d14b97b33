/* Stand-in for OpenEnclave's log.h: the peer's util/log.h includes it, and
 * the host build of its ORAM and hash table (IS_TEST) uses nothing from it. */
#ifndef SIGNAL_COMPAT_OE_LOG_H
#define SIGNAL_COMPAT_OE_LOG_H
#endif
