# Scaling: throughput and scaling efficiency vs GPUs for one model, one curve
# per network and backend and per value of every other setting the study
# varies. Reads the table `ddpsim plot scaling CSV` derives from a
# `ddpsim simulate` CSV.
#
# Run by `ddpsim plot scaling CSV`, which sets:
#   data      the derived table: model, curve, gpus, samples_per_s, scaling_eff
#             (points that timed out or did not fit in memory left out; each curve's rows consecutive,
#             in order of GPUs)
#   model     the model to draw (one file per model)
#   curves    space-separated curve names, e.g. IB/nccl/amp_bf16/batch=16
#   colours   each curve's colour: one per curve but for the backend
#   dashes    each curve's dash type: one per backend (points differ too)
#   comp      the compression drawn ("none" when the study sweeps it; "" when no
#             row is compressed)
#   devices   what a rank is, plural and singular, and where it must fit: 'GPUs',
#             device 'GPU', memory 'GPU memory' (the default), or 'CPU ranks',
#             'CPU rank', 'memory' for a study on a CPU profile
#   out       output path without extension; writes out.png and out.svg
#   png, svg  the files written (ddpsim passes temp files, renamed
#             once gnuplot succeeds); default out.png and out.svg
if (!exists("png")) png = out.".png"
if (!exists("svg")) svg = out.".svg"
if (!exists("devices")) devices = "GPUs"
if (!exists("device")) device = "GPU"
if (!exists("memory")) memory = "GPU memory"
set datafile separator ","
set datafile columnheaders
set key outside right top box noenhanced
set grid
set logscale x 2
set xlabel devices
set pointsize 0.8

sel(c) = (strcol("model") eq model && strcol("curve") eq c)
# Past eight colours gnuplot repeats them: the point type changes instead.
lc_of(i) = word(colours,i) + 0
dt_of(i) = word(dashes,i) + 0
pt_of(i) = 4 + 2 * ((lc_of(i) - 1) / 8 % 5) + dt_of(i)

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 1500,620 font ",10"
  } else {
    set terminal svg size 1500,620 dynamic font ",10"
  }
  set output (fmt eq "png" ? png : svg)
  set multiplot layout 1,2 title sprintf("%s: data-parallel scaling%s (points that time out or do not fit in %s are left out)", model, \
      comp eq "" ? "" : sprintf(", compression %s", comp), memory) noenhanced

  set ylabel "throughput (samples/s)"
  set logscale y
  set yrange [*:*]
  plot for [i=1:words(curves)] data \
       using (sel(word(curves,i)) ? column("gpus") : NaN):(column("samples_per_s")) \
       with linespoints lc lc_of(i) dt dt_of(i) pt pt_of(i) title word(curves,i)

  set ylabel "scaling efficiency (vs one ".device.")"
  unset logscale y
  set yrange [0:1.05]
  plot for [i=1:words(curves)] data \
       using (sel(word(curves,i)) ? column("gpus") : NaN):(column("scaling_eff")) \
       with linespoints lc lc_of(i) dt dt_of(i) pt pt_of(i) title word(curves,i)
  unset multiplot
  set output
}
