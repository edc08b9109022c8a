/**
 * Planted violations of {@link io.flix.flink.architecture.OperatorRules}, one small tree per rule, each laid out as the
 * operator module is (a root package with a builder, internal packages under it). Test code only: the real rules
 * import the main classes alone, and {@link io.flix.flink.architecture.OperatorRulesPlantedTest} shows that each rule
 * reports its tree.
 */
package io.flix.flink.architecture.planted;
