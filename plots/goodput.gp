# Goodput vs checkpoint interval for one model: one curve per checkpoint
# mode (colour) and spare-node pool (line style), with 95% confidence bars,
# Young's (dashed) and Daly's (dotted) optimal intervals per mode, and the
# best simulated interval circled. Reads a `ddpsim simulate` CSV of a
# scenario with failures and checkpoints.
#
# Run by `ddpsim plot goodput CSV`, which sets:
#   csv     the results file
#   model   the model to draw (one file per model)
#   modes   space-separated checkpoint modes (sync async)
#   spares  space-separated spare-pool sizes
#   out     output path without extension; writes out.png and out.svg
#   png, svgthe files written (ddpsim passes temp files, renamed
#           once gnuplot succeeds); default out.png and out.svg
if (!exists("png")) png = out.".png"
if (!exists("svg")) svg = out.".svg"
set datafile separator ","
set datafile columnheaders
set key outside right top box
set grid
set logscale x 10
set xlabel "checkpoint interval (s of training)"
set ylabel "goodput (failure-free time / wall time, all runs)"
set yrange [0:1.0]
set pointsize 0.9

sel(m, sp) = (strcol("model") eq model && strcol("ckpt_mode") eq m && strcol("spares") eq sp)
selm(m) = (strcol("model") eq model && strcol("ckpt_mode") eq m)

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 1200,650 font ",10"
  } else {
    set terminal svg size 1200,650 dynamic font ",10"
  }
  set output (fmt eq "png" ? png : svg)
  set title sprintf("%s: goodput under failures (Young: dashed, Daly: dotted, best simulated: circled)", model)
  plot for [i=1:words(modes)] for [j=1:words(spares)] csv \
         using (sel(word(modes,i), word(spares,j)) ? column("ckpt_every_s") : NaN):(column("goodput")):(column("goodput_lo")):(column("goodput_hi")) \
         with yerrorlines lc i dt j pt (4+2*j) title sprintf("%s, %s spares", word(modes,i), word(spares,j)), \
       for [i=1:words(modes)] csv \
         using (selm(word(modes,i)) ? column("young_s") : NaN):(0):(0):(1) with vectors nohead lc i dt 2 notitle, \
       for [i=1:words(modes)] csv \
         using (selm(word(modes,i)) ? column("daly_s") : NaN):(0):(0):(1) with vectors nohead lc i dt 3 notitle, \
       for [i=1:words(modes)] for [j=1:words(spares)] csv \
         using (sel(word(modes,i), word(spares,j)) && column("ckpt_every_s") == column("best_every_s") ? column("ckpt_every_s") : NaN):(column("goodput")) \
         with points lc i pt 6 ps 2.5 notitle
  set output
}
