# Scaling: throughput and scaling efficiency vs GPUs for one model, one curve
# per network (colour) and backend (line style). Reads a `ddpsim simulate` CSV.
#
# Run by `ddpsim plot scaling CSV`, which sets:
#   csv       the results file
#   model     the model to draw (one file per model)
#   networks  space-separated network names, in CSV order
#   backends  space-separated backend names
#   comp      the compression to draw ("none" when the study sweeps it; "" for all)
#   out       output path without extension; writes out.png and out.svg
set datafile separator ","
set datafile columnheaders
set key outside right top box
set grid
set logscale x 2
set xlabel "GPUs"
set pointsize 0.8

sel(net, be) = (strcol("model") eq model && strcol("network") eq net && strcol("backend") eq be && \
               (comp eq "" || strcol("compression") eq comp))

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 1500,620 font ",10"
  } else {
    set terminal svg size 1500,620 dynamic font ",10"
  }
  set output out.".".fmt
  set multiplot layout 1,2 title sprintf("%s: data-parallel scaling%s (points that time out are left out)", model, \
      comp eq "" ? "" : sprintf(", compression %s", comp))

  set ylabel "throughput (samples/s)"
  set logscale y
  set yrange [*:*]
  plot for [i=1:words(networks)] for [j=1:words(backends)] csv \
       using (sel(word(networks,i), word(backends,j)) && strcol("status") eq "ok" ? column("gpus") : NaN):(column("samples_per_s")) \
       with linespoints lc i dt j pt (6+j) title sprintf("%s %s", word(networks,i), word(backends,j))

  set ylabel "scaling efficiency (vs one GPU)"
  unset logscale y
  set yrange [0:1.05]
  plot for [i=1:words(networks)] for [j=1:words(backends)] csv \
       using (sel(word(networks,i), word(backends,j)) && strcol("status") eq "ok" ? column("gpus") : NaN):(column("scaling_eff")) \
       with linespoints lc i dt j pt (6+j) title sprintf("%s %s", word(networks,i), word(backends,j))
  unset multiplot
  set output
}
