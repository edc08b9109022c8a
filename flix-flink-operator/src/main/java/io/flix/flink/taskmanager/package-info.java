/**
 * What the operators and the SQL tables take from the task manager they run on, in one place: the GPUs Flink
 * assigned to it ({@link io.flix.flink.taskmanager.TaskManagerGpus}), the release of what the job's class loader
 * holds ({@link io.flix.flink.taskmanager.ClassLoaderRelease}) and the backend an index got
 * ({@link io.flix.flink.taskmanager.BackendReport}). Uses Flink's runtime context and the index library's API only.
 */
package io.flix.flink.taskmanager;
