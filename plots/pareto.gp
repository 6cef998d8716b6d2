# Cost against time to train of every point `ddpsim advise` simulated: the
# front (no point both faster and cheaper) joined by a line, the points
# that miss the deadline or the budget hollow, the recommendation (rank 1)
# circled, the scenario as given marked with a cross, the deadline and the
# budget as dashed lines. Reads DIR/NAME-advice.csv.
#
# Run by `ddpsim plot pareto CSV` (and `ddpsim advise`), which sets:
#   csv       the advice file
#   front     the front's points in order of time (time_to_train_h, cost_usd)
#   title     the study and its objective
#   deadline  hours, 0 for none
#   budget    USD, 0 for none
#   out       output path without extension; writes out.png and out.svg
#   png, svg  the files written (ddpsim passes temp files, renamed
#             once gnuplot succeeds); default out.png and out.svg
if (!exists("png")) png = out.".png"
if (!exists("svg")) svg = out.".svg"
set datafile separator ","
set datafile columnheaders
set key outside right top box
set grid
set logscale x 10
set logscale y 10
set xlabel "time to train (h)"
set ylabel "cost (USD)"
set pointsize 0.9

asgiven(s) = (s eq "the scenario as given")

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 1200,700 font ",10"
  } else {
    set terminal svg size 1200,700 dynamic font ",10"
  }
  set output (fmt eq "png" ? png : svg)
  set title title noenhanced
  unset arrow
  if (deadline > 0) { set arrow from deadline, graph 0 to deadline, graph 1 nohead dt 2 lc rgb "red" }
  if (budget > 0) { set arrow from graph 0, first budget to graph 1, first budget nohead dt 2 lc rgb "red" }
  plot csv using (column("feasible") == 1 ? column("time_to_train_h") : NaN):(column("cost_usd")) \
         with points pt 7 ps 0.6 lc rgb "#777777" title "simulated", \
       csv using (column("feasible") == 0 ? column("time_to_train_h") : NaN):(column("cost_usd")) \
         with points pt 6 ps 0.9 lc rgb "#aaaaaa" title "simulated, misses the deadline or budget", \
       front using "time_to_train_h":"cost_usd" with linespoints pt 7 lc rgb "#1f77b4" lw 2 title "front: none both faster and cheaper", \
       csv using (column("rank") == 1 ? column("time_to_train_h") : NaN):(column("cost_usd")) \
         with points pt 6 ps 3 lw 2 lc rgb "#d62728" title "recommendation (rank 1)", \
       csv using (asgiven(strcol("why")) ? column("time_to_train_h") : NaN):(column("cost_usd")) \
         with points pt 2 ps 2.5 lw 2 lc rgb "black" title "the scenario as given",
  set output
}
