//! `about(flag)`: what a flag means, what to do about it, and the bounds it is judged at.

use crate::flags::FlagKind;
use crate::metrics::VOCABULARY;

/// What one flag means and what to do, beside the names of the thresholds it is judged at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct About {
    /// The flag's name (`DEAD_CHANNELS`, without a count).
    pub flag: &'static str,
    /// What it means, in a sentence.
    pub means: &'static str,
    /// What to do about it.
    pub todo: &'static str,
    /// The names of the thresholds it is judged at (see [`crate::thresholds::BOUNDS`]).
    pub bounds: &'static [&'static str],
    /// Where the test and the advice come from.
    pub sources: &'static str,
}

impl About {
    /// The metrics the flag's rule reads (from the vocabulary).
    pub fn metrics(&self) -> Vec<&'static str> {
        VOCABULARY
            .iter()
            .filter(|m| m.used_by.contains(&self.flag))
            .map(|m| m.name)
            .collect()
    }
}

const ABOUT: [About; 14] = [
    About {
        flag: "NAN",
        means: "A number stopped being one: a NaN in the loss, a parameter, a gradient or an output. Nothing downstream of it means anything.",
        todo: "Find the first forward and node it appeared at. Lower the learning rate, clip gradients, add normalisation; check for log(0), 0/0 and overflow in half precision.",
        bounds: &[],
        sources: "AutoTrainer has_NaN and loss_issue (files it under explode); Keras TerminateOnNaN.",
    },
    About {
        flag: "INF",
        means: "A number overflowed to infinity in the loss, a parameter, a gradient or an output.",
        todo: "Find the first forward and node it appeared at. Lower the learning rate, clip gradients, add normalisation; in half precision use loss scaling or bfloat16.",
        bounds: &[],
        sources: "AutoTrainer has_NaN (np.isinf); Keras TerminateOnNaN stops on NaN or Inf.",
    },
    About {
        flag: "VANISHING",
        means: "The parameter gradients here are too small to train on: a tiny share of the last node's and tiny in themselves, or a mean |g| near nothing.",
        todo: "Add normalisation (BatchNorm, LayerNorm); switch saturating activations to ReLU or SELU; use He initialisation; add residual connections.",
        bounds: &["vanishing_ratio", "vanishing_floor", "vanishing_mean_abs"],
        sources: "AutoTrainer gradient_issue (beta_1 = 1e-3, beta_2 = 1e-4; repairs vanish_bn, vanish_relu, vanish_selu); SageMaker Debugger VanishingGradient (1e-7).",
    },
    About {
        flag: "EXPLODING",
        means: "The parameter gradients are too big to step on: far bigger here than at the last node, or grown by orders of magnitude over the forwards, every layer at once.",
        todo: "Clip gradients, lower the learning rate, add warmup or normalisation.",
        bounds: &["exploding_ratio", "exploding_growth"],
        sources: "AutoTrainer gradient_issue (beta_3 = 70).",
    },
    About {
        flag: "DEAD",
        means: "Most of this ReLU layer is off: more than the bound's share of its units are exactly zero on over 99 % of the inputs, so no gradient reaches them (GELU, SiLU, LeakyReLU units go dormant, not dead).",
        todo: "Lower the learning rate; use He initialisation; switch to LeakyReLU or GELU; add normalisation before the activation.",
        bounds: &["dead_layer_fraction", "dead_min_samples"],
        sources: "SageMaker Debugger DeadRelu (threshold_inactivity 1 %, threshold_layer 50 %); CS231n neural-networks-1.",
    },
    About {
        flag: "SATURATED",
        means: "This tanh- or sigmoid-like layer is pinned where the derivative is nothing: more than saturated_output_fraction of its outputs sit past 0.97 (tanh scale), or more than saturated_layer_fraction of its units sit there on over 99 % of the inputs.",
        todo: "Reduce the initialisation gain; add normalisation before the activation; change the activation.",
        bounds: &["saturated_layer_fraction", "saturated_output_fraction"],
        sources: "Karpathy makemore part 3 (|tanh| > 0.97); SageMaker Debugger SaturatedActivation (threshold_layer 50 %).",
    },
    About {
        flag: "STALLED",
        means: "The update applied is tiny next to the weights it moves: the learning rate is too low, or the tensor is frozen.",
        todo: "Raise the learning rate; check the tensor is given to the optimiser and not frozen; check the schedule has not decayed to nothing.",
        bounds: &["stalled_update_ratio"],
        sources: "CS231n neural-networks-3 (update/weight ratio around 1e-3); SageMaker Debugger WeightUpdateRatio.",
    },
    About {
        flag: "OVERSTEPPING",
        means: "The update applied is enormous next to the weights it moves: each step rewrites them.",
        todo: "Lower the learning rate; add warmup or gradient clipping; judge per tensor group (embeddings and norms may want their own rate).",
        bounds: &["overstepping_update_ratio"],
        sources: "CS231n neural-networks-3; SageMaker Debugger WeightUpdateRatio (large_threshold 10).",
    },
    About {
        flag: "DEAD_CHANNELS",
        means: "Part of the width does nothing: n units or channels of this ReLU layer (a tenth of its width or more) are active on under 1 % of the inputs.",
        todo: "Recycle them as ReDo does: re-initialise their incoming weights, zero their outgoing weights, reset their optimiser moments; or prune them.",
        bounds: &["dead_channels_min", "dead_channels_fraction", "dead_min_samples"],
        sources: "Dohare et al. 2024 (loss-of-plasticity post_run_analysis, f_c < 0.01); Sokar et al. 2023 ReDo (dopamine weight_recyclers).",
    },
    About {
        flag: "IGNORED_CHANNELS",
        means: "Part of the width does something nobody asks for: n units are active but the next layer gives them almost no weight.",
        todo: "Re-initialise or prune them (continual backprop replaces the lowest-utility units); check the next layer's weight decay and initialisation.",
        bounds: &["ignored_channels_min", "ignored_channels_fraction"],
        sources: "Dohare et al. 2024 continual backprop contribution utility (lop/algos/gnt.py); ReDo cbp score.",
    },
    About {
        flag: "LEAKAGE",
        means: "Two groups meant to stay apart carry the same information: their outputs on the same inputs have a linear CKA near 1.",
        todo: "Find the path they share (a shared input, a skip connection, a common normalisation); for data splits, deduplicate train and test.",
        bounds: &["leakage_cka"],
        sources: "Kornblith et al. 2019 (linear CKA); Deepchecks TrainTestSamplesMix for split overlap.",
    },
    About {
        flag: "NARROWING",
        means: "The update has collapsed into a few directions: its effective rank is a small share of the rank it could have.",
        todo: "Use an orthogonalised optimiser (Muon) or lower the learning rate; check for a dominant input direction.",
        bounds: &["narrowing_erank_fraction"],
        sources: "Roy & Vetterli 2007 (effective rank); Kumar et al. 2021 (srank); K. Jordan 2024 (Muon).",
    },
    About {
        flag: "MISSING_NORMALISATION",
        means: "The signal grows over a stretch with nothing normalising it: the output variance here is many times the smallest before it since the last normalisation.",
        todo: "Add BatchNorm or LayerNorm in the stretch, scale the residual branch (alpha, SkipInit), or use scaled weight standardisation.",
        bounds: &["missing_norm_var_growth"],
        sources: "Brock, De & Smith 2021 (signal propagation plots); De & Smith 2020; SageMaker Debugger PoorWeightInitialization (10).",
    },
    About {
        flag: "LOSING_PLASTICITY",
        means: "Weights growing, rank falling and units going quiet, all at once, over the forwards looked at: the network is losing its ability to learn new things.",
        todo: "Continual backprop, ReDo, shrink-and-perturb, L2 or weight decay, LayerNorm.",
        bounds: &[
            "plasticity_param_growth",
            "plasticity_dormant_rise",
            "plasticity_erank_drop",
            "plasticity_min_points",
        ],
        sources: "Dohare et al. 2024 (Nature); Sokar et al. 2023 (ReDo); Lyle et al. 2024.",
    },
];

/// What a flag means and what to do about it, by name (`DEAD_CHANNELS(3)` works too).
pub fn about(flag: &str) -> Option<&'static About> {
    let kind = FlagKind::parse(flag)?;
    ABOUT.iter().find(|a| a.flag == kind.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thresholds::bound;

    #[test]
    fn every_flag_has_advice_with_known_bounds() {
        for kind in FlagKind::ALL {
            let a = about(kind.name()).unwrap_or_else(|| panic!("no about for {}", kind.name()));
            assert_eq!(a.flag, kind.name());
            assert!(!a.means.is_empty() && !a.todo.is_empty());
            for b in a.bounds {
                assert!(bound(b).is_some(), "{}: unknown bound {b}", a.flag);
            }
            assert!(!a.metrics().is_empty(), "{} reads no metric", a.flag);
        }
        assert_eq!(
            about("DEAD_CHANNELS(4)").map(|a| a.flag),
            Some("DEAD_CHANNELS")
        );
        assert!(about("HEALTHY").is_none());
    }

    #[test]
    fn every_bound_belongs_to_some_flag() {
        for b in crate::thresholds::BOUNDS {
            if crate::thresholds::EVERY_FLAG.contains(&b.name) {
                continue;
            }
            assert!(
                ABOUT.iter().any(|a| a.bounds.contains(&b.name)),
                "{} is judged by no flag",
                b.name
            );
        }
    }
}
