/* Stand-in for the JDK's jni.h: the peer's util/log.h names JavaVM in a
 * declaration only (log_init, not compiled here). */
#ifndef SIGNAL_COMPAT_JNI_H
#define SIGNAL_COMPAT_JNI_H
typedef struct JavaVM_ JavaVM;
#endif
